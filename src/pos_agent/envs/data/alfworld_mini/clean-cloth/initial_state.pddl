;; alfworld-mini: clean-cloth (bathroom)
;; A bathroom with both a bathtub basin and a sink basin (only the sink cleans); put the clean cloth in a cabinet.
;; Display names: Bathtub_bar_1_bar_BathtubBasin = bathtubbasin 1, Cabinet_bar_3 = cabinet 1, Cabinet_bar_2 = cabinet 2, Cabinet_bar_1 = cabinet 3, CounterTop_bar_1 = countertop 1, Drawer_bar_2 = drawer 1, Drawer_bar_1 = drawer 2, GarbageCan_bar_1 = garbagecan 1, HandTowelHolder_bar_1 = handtowelholder 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, Toilet_bar_1 = toilet 1, ToiletPaperHanger_bar_1 = toiletpaperhanger 1, TowelHolder_bar_1 = towelholder 1
;;                Cloth_bar_1 = cloth 1, SoapBar_bar_1 = soapbar 1, SoapBottle_bar_1 = soapbottle 1, HandTowel_bar_1 = handtowel 1, SprayBottle_bar_1 = spraybottle 1, ToiletPaper_bar_1 = toiletpaper 1, Candle_bar_1 = candle 1, DishSponge_bar_1 = dishsponge 1, TissueBox_bar_1 = tissuebox 1
(define (problem clean_cloth)
    (:domain alfred)
    (:objects
        agent1 - agent
        ButterKnifeType - otype
        CandleType - otype
        ClothType - otype
        DishSpongeType - otype
        HandTowelType - otype
        KnifeType - otype
        SoapBarType - otype
        SoapBottleType - otype
        SprayBottleType - otype
        TissueBoxType - otype
        ToiletPaperType - otype
        BathtubBasinType - rtype
        CabinetType - rtype
        CounterTopType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        HandTowelHolderType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        ToiletType - rtype
        ToiletPaperHangerType - rtype
        TowelHolderType - rtype
        Cloth_bar_1 - object
        SoapBar_bar_1 - object
        SoapBottle_bar_1 - object
        HandTowel_bar_1 - object
        SprayBottle_bar_1 - object
        ToiletPaper_bar_1 - object
        Candle_bar_1 - object
        DishSponge_bar_1 - object
        TissueBox_bar_1 - object
        Bathtub_bar_1_bar_BathtubBasin - receptacle
        Cabinet_bar_3 - receptacle
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CounterTop_bar_1 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        HandTowelHolder_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        Toilet_bar_1 - receptacle
        ToiletPaperHanger_bar_1 - receptacle
        TowelHolder_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Bathtub_bar_1_bar_BathtubBasin BathtubBasinType)
        (receptacleAtLocation Bathtub_bar_1_bar_BathtubBasin loc_bar_1)
        (receptacleType Cabinet_bar_3 CabinetType)
        (receptacleAtLocation Cabinet_bar_3 loc_bar_2)
        (openable Cabinet_bar_3)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_3)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_4)
        (openable Cabinet_bar_1)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_5)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_6)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_7)
        (openable Drawer_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_8)
        (receptacleType HandTowelHolder_bar_1 HandTowelHolderType)
        (receptacleAtLocation HandTowelHolder_bar_1 loc_bar_9)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_10)
        (receptacleType Toilet_bar_1 ToiletType)
        (receptacleAtLocation Toilet_bar_1 loc_bar_11)
        (receptacleType ToiletPaperHanger_bar_1 ToiletPaperHangerType)
        (receptacleAtLocation ToiletPaperHanger_bar_1 loc_bar_12)
        (receptacleType TowelHolder_bar_1 TowelHolderType)
        (receptacleAtLocation TowelHolder_bar_1 loc_bar_13)
        (objectType Cloth_bar_1 ClothType)
        (inReceptacle Cloth_bar_1 Drawer_bar_1)
        (objectAtLocation Cloth_bar_1 loc_bar_7)
        (pickupable Cloth_bar_1)
        (cleanable Cloth_bar_1)
        (objectType SoapBar_bar_1 SoapBarType)
        (inReceptacle SoapBar_bar_1 Bathtub_bar_1_bar_BathtubBasin)
        (objectAtLocation SoapBar_bar_1 loc_bar_1)
        (pickupable SoapBar_bar_1)
        (cleanable SoapBar_bar_1)
        (objectType SoapBottle_bar_1 SoapBottleType)
        (inReceptacle SoapBottle_bar_1 CounterTop_bar_1)
        (objectAtLocation SoapBottle_bar_1 loc_bar_5)
        (pickupable SoapBottle_bar_1)
        (objectType HandTowel_bar_1 HandTowelType)
        (inReceptacle HandTowel_bar_1 HandTowelHolder_bar_1)
        (objectAtLocation HandTowel_bar_1 loc_bar_9)
        (pickupable HandTowel_bar_1)
        (objectType SprayBottle_bar_1 SprayBottleType)
        (inReceptacle SprayBottle_bar_1 Toilet_bar_1)
        (objectAtLocation SprayBottle_bar_1 loc_bar_11)
        (pickupable SprayBottle_bar_1)
        (objectType ToiletPaper_bar_1 ToiletPaperType)
        (inReceptacle ToiletPaper_bar_1 ToiletPaperHanger_bar_1)
        (objectAtLocation ToiletPaper_bar_1 loc_bar_12)
        (pickupable ToiletPaper_bar_1)
        (objectType Candle_bar_1 CandleType)
        (inReceptacle Candle_bar_1 CounterTop_bar_1)
        (objectAtLocation Candle_bar_1 loc_bar_5)
        (pickupable Candle_bar_1)
        (objectType DishSponge_bar_1 DishSpongeType)
        (inReceptacle DishSponge_bar_1 Cabinet_bar_3)
        (objectAtLocation DishSponge_bar_1 loc_bar_2)
        (pickupable DishSponge_bar_1)
        (cleanable DishSponge_bar_1)
        (objectType TissueBox_bar_1 TissueBoxType)
        (inReceptacle TissueBox_bar_1 Toilet_bar_1)
        (objectAtLocation TissueBox_bar_1 loc_bar_11)
        (pickupable TissueBox_bar_1)
        (canContain BathtubBasinType ClothType)
        (canContain BathtubBasinType DishSpongeType)
        (canContain BathtubBasinType HandTowelType)
        (canContain BathtubBasinType SoapBarType)
        (canContain CabinetType CandleType)
        (canContain CabinetType ClothType)
        (canContain CabinetType DishSpongeType)
        (canContain CabinetType HandTowelType)
        (canContain CabinetType SoapBarType)
        (canContain CabinetType SoapBottleType)
        (canContain CabinetType SprayBottleType)
        (canContain CabinetType TissueBoxType)
        (canContain CabinetType ToiletPaperType)
        (canContain CounterTopType CandleType)
        (canContain CounterTopType ClothType)
        (canContain CounterTopType DishSpongeType)
        (canContain CounterTopType HandTowelType)
        (canContain CounterTopType SoapBarType)
        (canContain CounterTopType SoapBottleType)
        (canContain CounterTopType SprayBottleType)
        (canContain CounterTopType TissueBoxType)
        (canContain CounterTopType ToiletPaperType)
        (canContain DrawerType CandleType)
        (canContain DrawerType ClothType)
        (canContain DrawerType DishSpongeType)
        (canContain DrawerType HandTowelType)
        (canContain DrawerType SoapBarType)
        (canContain DrawerType SoapBottleType)
        (canContain DrawerType SprayBottleType)
        (canContain DrawerType TissueBoxType)
        (canContain DrawerType ToiletPaperType)
        (canContain GarbageCanType ClothType)
        (canContain GarbageCanType DishSpongeType)
        (canContain GarbageCanType HandTowelType)
        (canContain GarbageCanType SoapBarType)
        (canContain GarbageCanType SoapBottleType)
        (canContain GarbageCanType SprayBottleType)
        (canContain GarbageCanType TissueBoxType)
        (canContain GarbageCanType ToiletPaperType)
        (canContain HandTowelHolderType HandTowelType)
        (canContain SinkBasinType ClothType)
        (canContain SinkBasinType DishSpongeType)
        (canContain SinkBasinType HandTowelType)
        (canContain SinkBasinType SoapBarType)
        (canContain ToiletType CandleType)
        (canContain ToiletType ClothType)
        (canContain ToiletType DishSpongeType)
        (canContain ToiletType HandTowelType)
        (canContain ToiletType SoapBarType)
        (canContain ToiletType SoapBottleType)
        (canContain ToiletType SprayBottleType)
        (canContain ToiletType TissueBoxType)
        (canContain ToiletType ToiletPaperType)
        (canContain ToiletPaperHangerType ToiletPaperType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (cleanable ?o)
                    (objectType ?o ClothType)
                    (receptacleType ?r CabinetType)
                    (isClean ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
