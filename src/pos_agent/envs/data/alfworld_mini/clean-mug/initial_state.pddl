;; alfworld-mini: clean-mug (kitchen)
;; The mug is tucked in a closed cabinet; rinse it in the sink basin and put it in the coffee machine.
;; Display names: Cabinet_bar_3 = cabinet 1, Cabinet_bar_2 = cabinet 2, Cabinet_bar_1 = cabinet 3, CoffeeMachine_bar_1 = coffeemachine 1, CounterTop_bar_3 = countertop 1, CounterTop_bar_2 = countertop 2, CounterTop_bar_1 = countertop 3, Drawer_bar_1 = drawer 1, Fridge_bar_1 = fridge 1, GarbageCan_bar_1 = garbagecan 1, Microwave_bar_1 = microwave 1, Shelf_bar_1 = shelf 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, StoveBurner_bar_1 = stoveburner 1, Toaster_bar_1 = toaster 1
;;                Mug_bar_1 = mug 1, Cup_bar_2 = cup 1, Cup_bar_1 = cup 2, Bowl_bar_1 = bowl 1, DishSponge_bar_1 = dishsponge 1, Spoon_bar_1 = spoon 1, Kettle_bar_1 = kettle 1, Bread_bar_1 = bread 1, WineBottle_bar_1 = winebottle 1
(define (problem clean_mug)
    (:domain alfred)
    (:objects
        agent1 - agent
        BowlType - otype
        BreadType - otype
        ButterKnifeType - otype
        CupType - otype
        DishSpongeType - otype
        KettleType - otype
        KnifeType - otype
        MugType - otype
        SpoonType - otype
        WineBottleType - otype
        CabinetType - rtype
        CoffeeMachineType - rtype
        CounterTopType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        ShelfType - rtype
        SinkBasinType - rtype
        StoveBurnerType - rtype
        ToasterType - rtype
        Mug_bar_1 - object
        Cup_bar_2 - object
        Cup_bar_1 - object
        Bowl_bar_1 - object
        DishSponge_bar_1 - object
        Spoon_bar_1 - object
        Kettle_bar_1 - object
        Bread_bar_1 - object
        WineBottle_bar_1 - object
        Cabinet_bar_3 - receptacle
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CoffeeMachine_bar_1 - receptacle
        CounterTop_bar_3 - receptacle
        CounterTop_bar_2 - receptacle
        CounterTop_bar_1 - receptacle
        Drawer_bar_1 - receptacle
        Fridge_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Microwave_bar_1 - receptacle
        Shelf_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        StoveBurner_bar_1 - receptacle
        Toaster_bar_1 - receptacle
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
        loc_bar_14 - location
        loc_bar_15 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Cabinet_bar_3 CabinetType)
        (receptacleAtLocation Cabinet_bar_3 loc_bar_1)
        (openable Cabinet_bar_3)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_2)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_3)
        (openable Cabinet_bar_1)
        (receptacleType CoffeeMachine_bar_1 CoffeeMachineType)
        (receptacleAtLocation CoffeeMachine_bar_1 loc_bar_4)
        (receptacleType CounterTop_bar_3 CounterTopType)
        (receptacleAtLocation CounterTop_bar_3 loc_bar_5)
        (receptacleType CounterTop_bar_2 CounterTopType)
        (receptacleAtLocation CounterTop_bar_2 loc_bar_6)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_7)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_8)
        (openable Drawer_bar_1)
        (receptacleType Fridge_bar_1 FridgeType)
        (receptacleAtLocation Fridge_bar_1 loc_bar_9)
        (openable Fridge_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_10)
        (receptacleType Microwave_bar_1 MicrowaveType)
        (receptacleAtLocation Microwave_bar_1 loc_bar_11)
        (openable Microwave_bar_1)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_12)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_13)
        (receptacleType StoveBurner_bar_1 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_1 loc_bar_14)
        (receptacleType Toaster_bar_1 ToasterType)
        (receptacleAtLocation Toaster_bar_1 loc_bar_15)
        (objectType Mug_bar_1 MugType)
        (inReceptacle Mug_bar_1 Cabinet_bar_1)
        (objectAtLocation Mug_bar_1 loc_bar_3)
        (pickupable Mug_bar_1)
        (heatable Mug_bar_1)
        (coolable Mug_bar_1)
        (cleanable Mug_bar_1)
        (isReceptacleObject Mug_bar_1)
        (objectType Cup_bar_2 CupType)
        (inReceptacle Cup_bar_2 Shelf_bar_1)
        (objectAtLocation Cup_bar_2 loc_bar_12)
        (pickupable Cup_bar_2)
        (heatable Cup_bar_2)
        (coolable Cup_bar_2)
        (cleanable Cup_bar_2)
        (isReceptacleObject Cup_bar_2)
        (objectType Cup_bar_1 CupType)
        (inReceptacle Cup_bar_1 CounterTop_bar_1)
        (objectAtLocation Cup_bar_1 loc_bar_7)
        (pickupable Cup_bar_1)
        (heatable Cup_bar_1)
        (coolable Cup_bar_1)
        (cleanable Cup_bar_1)
        (isReceptacleObject Cup_bar_1)
        (objectType Bowl_bar_1 BowlType)
        (inReceptacle Bowl_bar_1 Sink_bar_1_bar_SinkBasin)
        (objectAtLocation Bowl_bar_1 loc_bar_13)
        (pickupable Bowl_bar_1)
        (coolable Bowl_bar_1)
        (cleanable Bowl_bar_1)
        (isReceptacleObject Bowl_bar_1)
        (objectType DishSponge_bar_1 DishSpongeType)
        (inReceptacle DishSponge_bar_1 Sink_bar_1_bar_SinkBasin)
        (objectAtLocation DishSponge_bar_1 loc_bar_13)
        (pickupable DishSponge_bar_1)
        (cleanable DishSponge_bar_1)
        (objectType Spoon_bar_1 SpoonType)
        (inReceptacle Spoon_bar_1 Drawer_bar_1)
        (objectAtLocation Spoon_bar_1 loc_bar_8)
        (pickupable Spoon_bar_1)
        (cleanable Spoon_bar_1)
        (objectType Kettle_bar_1 KettleType)
        (inReceptacle Kettle_bar_1 StoveBurner_bar_1)
        (objectAtLocation Kettle_bar_1 loc_bar_14)
        (pickupable Kettle_bar_1)
        (cleanable Kettle_bar_1)
        (objectType Bread_bar_1 BreadType)
        (inReceptacle Bread_bar_1 CounterTop_bar_3)
        (objectAtLocation Bread_bar_1 loc_bar_5)
        (pickupable Bread_bar_1)
        (heatable Bread_bar_1)
        (coolable Bread_bar_1)
        (objectType WineBottle_bar_1 WineBottleType)
        (inReceptacle WineBottle_bar_1 Fridge_bar_1)
        (objectAtLocation WineBottle_bar_1 loc_bar_9)
        (pickupable WineBottle_bar_1)
        (coolable WineBottle_bar_1)
        (canContain CabinetType BowlType)
        (canContain CabinetType CupType)
        (canContain CabinetType DishSpongeType)
        (canContain CabinetType KettleType)
        (canContain CabinetType MugType)
        (canContain CabinetType WineBottleType)
        (canContain CoffeeMachineType MugType)
        (canContain CounterTopType BowlType)
        (canContain CounterTopType BreadType)
        (canContain CounterTopType CupType)
        (canContain CounterTopType DishSpongeType)
        (canContain CounterTopType KettleType)
        (canContain CounterTopType MugType)
        (canContain CounterTopType SpoonType)
        (canContain CounterTopType WineBottleType)
        (canContain DrawerType DishSpongeType)
        (canContain DrawerType SpoonType)
        (canContain FridgeType BowlType)
        (canContain FridgeType BreadType)
        (canContain FridgeType CupType)
        (canContain FridgeType MugType)
        (canContain FridgeType WineBottleType)
        (canContain GarbageCanType BreadType)
        (canContain GarbageCanType DishSpongeType)
        (canContain GarbageCanType WineBottleType)
        (canContain MicrowaveType BowlType)
        (canContain MicrowaveType BreadType)
        (canContain MicrowaveType CupType)
        (canContain MicrowaveType MugType)
        (canContain ShelfType BowlType)
        (canContain ShelfType CupType)
        (canContain ShelfType DishSpongeType)
        (canContain ShelfType KettleType)
        (canContain ShelfType MugType)
        (canContain ShelfType WineBottleType)
        (canContain SinkBasinType BowlType)
        (canContain SinkBasinType CupType)
        (canContain SinkBasinType DishSpongeType)
        (canContain SinkBasinType KettleType)
        (canContain SinkBasinType MugType)
        (canContain SinkBasinType SpoonType)
        (canContain StoveBurnerType KettleType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (cleanable ?o)
                    (objectType ?o MugType)
                    (receptacleType ?r CoffeeMachineType)
                    (isClean ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
